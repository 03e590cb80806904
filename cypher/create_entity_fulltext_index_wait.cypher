// Waits (at most $seconds) until the full-text index over entity names is online: a load
// into an empty graph creates it after the writes, when Neo4j fills it in one pass.
CALL db.awaitIndex('entity_names', $seconds)
