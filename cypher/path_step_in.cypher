// One hop of a relation path against the arrow: the entities with an outgoing $rel
// relationship into the frontier $names (e.g. the movies written_by a writer).
UNWIND $names AS name
MATCH (:Entity {name: name})<-[:$($rel)]-(m:Entity)
RETURN collect(DISTINCT m.name) AS names
