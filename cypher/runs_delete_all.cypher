// Deletes every saved run (:KgqaRun) with its KGQA_* links; the entities they point to stay.
OPTIONAL MATCH (run:KgqaRun)
DETACH DELETE run
RETURN count(run) AS deleted
