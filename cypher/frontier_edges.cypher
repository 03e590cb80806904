// Every relationship touching the frontier entities, in both directions, with the side it
// leaves from: one hop of graph-constrained answering moves the frontier along these.
// One row holding a list (fast to hydrate); each item is
// [frontier name, triple id, subject, relation, object, outgoing?, element id of the far node].
UNWIND $names AS name
MATCH (n:Entity {name: name})-[r]-(m:Entity)
WITH DISTINCT n, r, m
LIMIT $limit
RETURN collect([n.name, r.id, startNode(r).name, type(r), endNode(r).name, startNode(r) = n,
                elementId(m)]) AS rows
