RETURN EXISTS { MATCH (:Entity {name: $name}) } AS exists
