// Records one `kgqa ask` run as a :KgqaRun node, linked to its topic entities (KGQA_TOPIC)
// and answer entities (KGQA_ANSWER {rank}), matched by exact name. Only the KgqaRun label and
// KGQA_* types are written: the KB's :Entity nodes and triple relationships are untouched.
// $topic: [name]; $answers: [{name, rank}]; $evidence_ids: [triple id]; $parameters: JSON.
CREATE (run:KgqaRun {
  run_id: $run_id,
  question: $question,
  mode: $mode,
  answer: $answer,
  created: datetime($created),
  model: $model,
  parameters: $parameters,
  evidence_ids: $evidence_ids,
  topic: $topic,
  answer_names: [a IN $answers | a.name]
})
WITH run
CALL (run) {
  UNWIND $topic AS name
  MATCH (e:Entity {name: name})
  MERGE (run)-[:KGQA_TOPIC]->(e)
}
CALL (run) {
  UNWIND $answers AS a
  MATCH (e:Entity {name: a.name})
  MERGE (run)-[:KGQA_ANSWER {rank: a.rank}]->(e)
}
RETURN run.run_id AS run_id, elementId(run) AS element_id
