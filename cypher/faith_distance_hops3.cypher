// Length of the shortest path (any relations, either direction, at most 3) from the topic
// entities to each claimed name; null when there is none. Both names are index seeks; the
// search runs from both ends. A name equal to a topic entity is left to the caller
// (shortestPath refuses equal end points).
UNWIND $names AS name
MATCH (b:Entity {name: name})
UNWIND $topics AS topic
MATCH (a:Entity {name: topic})
WHERE a <> b
OPTIONAL MATCH p = shortestPath((a)-[*..3]-(b))
RETURN name, min(length(p)) AS hops
