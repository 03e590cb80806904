// One hop of a relation path: the entities reached from the frontier $names along an outgoing
// $rel relationship (a dynamic type: the relation is a value, never spliced into the text).
// The name index anchors each frontier entity; one row holding the distinct names.
UNWIND $names AS name
MATCH (:Entity {name: name})-[:$($rel)]->(m:Entity)
RETURN collect(DISTINCT m.name) AS names
