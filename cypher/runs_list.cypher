// The $limit most recent saved `kgqa ask` runs, newest first.
MATCH (run:KgqaRun)
WITH run
ORDER BY run.created DESC
LIMIT $limit
RETURN run.run_id AS run_id, run.created AS created, run.question AS question,
       run.mode AS mode, run.answer AS answer, run.model AS model, run.topic AS topic,
       run.answer_names AS answers,
       size(run.evidence_ids) AS evidence_count, elementId(run) AS element_id
ORDER BY created DESC
