// For up to $limit nodes that following $rel ($outgoing: along the arrow, else against it)
// reaches: how many were sampled, and per (relation, direction seen from them) how many have
// such an edge. What a KB profile learns the schema from: which steps can follow which.
MATCH (a:Entity)-[r:$($rel)]-(b:Entity)
WHERE (startNode(r) = a) = $outgoing
WITH DISTINCT b
ORDER BY b.name
LIMIT $limit
WITH collect(b) AS far
UNWIND far AS b
MATCH (b)-[q]-(:Entity)
WITH size(far) AS sampled, b, type(q) AS relation, startNode(q) = b AS outgoing
WITH sampled, relation, outgoing, count(DISTINCT b) AS nodes
RETURN sampled, collect([relation, outgoing, nodes]) AS edges
