// Entities whose lower-cased name is in $lowered (a scan of all entities, ~50 ms on MetaQA:
// run only for the claims that no exact name matched).
MATCH (e:Entity)
WHERE toLower(e.name) IN $lowered
RETURN toLower(e.name) AS key, collect(e.name) AS names
