// $names: list of entity names. Idempotent.
UNWIND $names AS name
MERGE (:Entity {name: name})
