// Deletes the saved runs $run_ids with their KGQA_* links; the entities they point to stay.
OPTIONAL MATCH (run:KgqaRun) WHERE run.run_id IN $run_ids
DETACH DELETE run
RETURN count(run) AS deleted
