// Triple ids carried by more than one relationship (a hash collision between two different
// triples, or a concurrent load); at most $limit of them, with one example triple each.
MATCH (s:Entity)-[r]->(o:Entity)
WHERE r.id IS NOT NULL
WITH r.id AS id, count(r) AS copies, collect([s.name, type(r), o.name])[..2] AS examples
WHERE copies > 1
RETURN id, copies, examples
ORDER BY id
LIMIT $limit
