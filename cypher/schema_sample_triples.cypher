// Up to $limit triples of relation $rel (a dynamic type: a value, never spliced into the text),
// the lowest triple ids first: ids are content hashes, so this is a repeatable pseudo-random
// sample.
MATCH (s:Entity)-[r:$($rel)]->(o:Entity)
WITH s, r, o
ORDER BY r.id
LIMIT $limit
RETURN r.id AS id, s.name AS subject, type(r) AS relation, o.name AS object
