// For up to $limit nodes that following $rel ($outgoing: along the arrow, else against it)
// reaches: how many were sampled, and per (relation, direction seen from them) how many have
// such an edge. What a KB profile learns the schema from: which steps can follow which.
// The nodes sampled are those of the lowest triple ids (content hashes: a repeatable
// pseudo-random sample; on a graph whose relationships carry no id, the lowest element ids).
// Not the first names: in name order a movie KB samples "10", "1408", "1984" first, titles
// that are also years, and learned that movies have a release year coming in.
MATCH (a:Entity)-[r:$($rel)]-(b:Entity)
WHERE (startNode(r) = a) = $outgoing
WITH b, min(r.id) AS first, min(elementId(r)) AS fallback
ORDER BY first, fallback
LIMIT $limit
WITH collect(b) AS far
UNWIND far AS b
MATCH (b)-[q]-(:Entity)
WITH size(far) AS sampled, b, type(q) AS relation, startNode(q) = b AS outgoing
WITH sampled, relation, outgoing, count(DISTINCT b) AS nodes
RETURN sampled, collect([relation, outgoing, nodes]) AS edges
