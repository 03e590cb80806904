// Every relationship that touches the topic entities, in both directions (N = 1).
// Same columns as candidates_hops2/3 (the topic entities are always expanded, so no hub cap).
MATCH (n:Entity) WHERE n.name IN $entities
MATCH (n)-[r]-()
WITH DISTINCT r
LIMIT $limit
WITH r, startNode(r) AS a, endNode(r) AS b
RETURN r.id AS id, a.name AS subject, type(r) AS relation, b.name AS object,
       COUNT { (a)--() } AS subject_degree, COUNT { (b)--() } AS object_degree
