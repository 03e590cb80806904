// Which of the given names are entities (exact, case-sensitive: "clint eastwood" the tag and
// "Clint Eastwood" the person are different nodes).
UNWIND $names AS name
OPTIONAL MATCH (n:Entity {name: name})
RETURN name, n IS NOT NULL AS found, elementId(n) AS node_id
