// The relation types the KB uses (not the KGQA_* links of saved runs), each checked to have a
// relationship (a type token stays in the database after its last relationship is deleted).
CALL db.relationshipTypes() YIELD relationshipType AS type
WITH type WHERE NOT type STARTS WITH 'KGQA_'
CALL (type) {
  MATCH ()-[r:$(type)]->()
  RETURN r LIMIT 1
}
RETURN collect(DISTINCT type) AS types
