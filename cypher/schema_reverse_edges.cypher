// For up to $limit triples (s, $rel, o), the lowest ids first: how many were sampled, and per
// relation q how many have a triple (o, q, s) back (inverse and symmetric relations).
MATCH (s:Entity)-[r:$($rel)]->(o:Entity)
WITH s, r, o
ORDER BY r.id
LIMIT $limit
WITH collect([s, o]) AS pairs
UNWIND pairs AS pair
WITH size(pairs) AS sampled, pair[0] AS s, pair[1] AS o
OPTIONAL MATCH (o)-[q]->(s)
WITH sampled, type(q) AS relation, count(q) AS backs
RETURN sampled, collect([relation, backs]) AS relations
