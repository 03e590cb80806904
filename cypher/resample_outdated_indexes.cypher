// Re-sample every index whose statistics are out of date (synchronous, milliseconds for the
// name index). An index created or sampled while the graph was empty keeps "0 entries" until
// Neo4j's background sampler runs; until then the planner scans the whole name index instead
// of seeking one name.
CALL db.resampleOutdatedIndexes()
