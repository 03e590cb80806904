// Every relationship within 2 hop(s) of the topic entities, in both directions.
// Nodes within 1 hop(s) are found by a variable-length path (the planner turns the DISTINCT
// end nodes into a pruning BFS, so paths through hubs are never all built); the hub policy:
// after the topic entities, never step *through* a node with more than $hub_cap relationships.
// Then one expansion from those nodes gives the relationships; degrees come back so the caller
// can compute hop distances and report the hubs it did not expand.
MATCH (s:Entity) WHERE s.name IN $entities
MATCH (s) (()-[]-(x) WHERE COUNT { (x)--() } <= $hub_cap){0,1} (n)
WITH DISTINCT n
MATCH (n)-[r]-()
WITH DISTINCT r
LIMIT $limit
WITH r, startNode(r) AS a, endNode(r) AS b
RETURN r.id AS id, a.name AS subject, type(r) AS relation, b.name AS object,
       COUNT { (a)--() } AS subject_degree, COUNT { (b)--() } AS object_degree
