// Only KB triples: :KgqaRun links (saved answers) are not part of the KB.
MATCH (:Entity)-[r]->(:Entity)
RETURN count(r) AS count
