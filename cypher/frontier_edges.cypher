// Every relationship touching the frontier entities, in both directions, with the side it
// leaves from: one hop of graph-constrained answering moves the frontier along these.
UNWIND $names AS name
MATCH (n:Entity {name: name})-[r]-(m)
WITH DISTINCT n, r, m
LIMIT $limit
RETURN n.name AS from_name, r.id AS id, startNode(r).name AS subject, type(r) AS relation,
       endNode(r).name AS object, startNode(r) = n AS outgoing, elementId(m) AS to_node_id
