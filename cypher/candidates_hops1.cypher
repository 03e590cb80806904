// Every relationship that touches the topic entities, in both directions (N = 1).
// Same columns as candidates_hops2/3 (the topic entities are always expanded, so no hub cap).
MATCH (n:Entity) WHERE n.name IN $entities
// The far end is an :Entity: saved runs (:KgqaRun) link to entities but are not the KB.
MATCH (n)-[r]-(:Entity)
WITH DISTINCT r
LIMIT $limit
WITH r, startNode(r) AS a, endNode(r) AS b
// One row holding a list: hydrating thousands of records costs the Python driver ~5x more.
// Degrees leave out saved runs' links (KGQA_*), so saving answers never moves the hub cap;
// each COUNT by type reads Neo4j's degree store (O(1)), unlike a label check per neighbour.
RETURN collect([r.id, a.name, type(r), b.name,
                COUNT { (a)--() } - COUNT { (a)<-[:KGQA_TOPIC|KGQA_ANSWER]-() },
                COUNT { (b)--() } - COUNT { (b)<-[:KGQA_TOPIC|KGQA_ANSWER]-() }]) AS rows
