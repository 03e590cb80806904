// Every relationship within 3 hop(s) of the topic entities, in both directions.
// Nodes within 2 hop(s) are found by a variable-length path (the planner turns the DISTINCT
// end nodes into a pruning BFS, so paths through hubs are never all built); the hub policy:
// after the topic entities, never step *through* a node with more than $hub_cap relationships.
// Then one expansion from those nodes gives the relationships; degrees come back so the caller
// can compute hop distances and report the hubs it did not expand. Each row of `rows` is
// [triple id, subject, relation, object, subject degree, object degree].
MATCH (s:Entity) WHERE s.name IN $entities
MATCH (s) (()-[]-(x:Entity) WHERE COUNT { (x)--() } - COUNT { (x)<-[:KGQA_TOPIC|KGQA_ANSWER]-() } <= $hub_cap){0,2} (n)
WITH DISTINCT n
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
