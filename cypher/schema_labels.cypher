// The node labels of the database (a graph read with entity labels "*": its name index
// covers them all but kgqa's own :KgqaRun).
CALL db.labels() YIELD label
RETURN collect(label) AS labels
