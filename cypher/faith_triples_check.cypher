// Which of the claimed support triples exist: each row is {id, s, o} with the names the
// answer recorded for that triple id; the subject's name index anchors the look-up, so no
// relationship scan. Returns the triples found, as stored.
UNWIND $rows AS row
MATCH (s:Entity {name: row.s})-[r]->(o:Entity {name: row.o})
WHERE r.id = row.id
RETURN r.id AS id, s.name AS subject, type(r) AS relation, o.name AS object
