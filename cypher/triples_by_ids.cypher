// $ids: triple ids. Relationship property indexes are per type in Neo4j, so this scans
// relationships; for ~10^5 relationships that stays in the tens of milliseconds.
MATCH (s:Entity)-[r]->(o:Entity)
WHERE r.id IN $ids
RETURN r.id AS id, s.name AS subject, type(r) AS relation, o.name AS object
