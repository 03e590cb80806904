// Every relationship that touches the topic entities, in both directions (N = 1).
// Same columns as candidates_hops2/3 (the topic entities are always expanded, so no hub cap).
MATCH (n:Entity) WHERE n.name IN $entities
MATCH (n)-[r]-()
WITH DISTINCT r
LIMIT $limit
WITH r, startNode(r) AS a, endNode(r) AS b
// One row holding a list: hydrating thousands of records costs the Python driver ~5x more.
RETURN collect([r.id, a.name, type(r), b.name, COUNT { (a)--() }, COUNT { (b)--() }]) AS rows
