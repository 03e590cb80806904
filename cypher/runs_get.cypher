// One saved `kgqa ask` run by its id (GET /v1/runs/{id}), with everything the node keeps.
MATCH (run:KgqaRun {run_id: $run_id})
RETURN run.run_id AS run_id, toString(run.created) AS created, run.question AS question,
       run.mode AS mode, run.answer AS answer, run.model AS model,
       run.parameters AS parameters, run.evidence_ids AS evidence_ids, run.topic AS topic,
       run.answer_names AS answers, elementId(run) AS element_id
LIMIT 1
