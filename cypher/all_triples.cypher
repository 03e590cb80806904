// Every triple of the graph (kgqa index: embed what the vector index lacks).
MATCH (s:Entity)-[r]->(o:Entity)
WHERE r.id IS NOT NULL
RETURN r.id AS id, s.name AS subject, type(r) AS relation, o.name AS object
