// Ask Neo4j to re-sample every index whose statistics are out of date. It only schedules the
// job (milliseconds for the name index of a KB); Neo4j 5.26 exposes no waiting variant. An
// index sampled while the graph was empty says "0 entries" until re-sampled, and with that
// sample the planner scans the whole name index instead of seeking one name.
CALL db.resampleOutdatedIndexes()
