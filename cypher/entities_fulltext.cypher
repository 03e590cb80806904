// Close names from the full-text index (Lucene syntax; the caller escapes the user's text).
CALL db.index.fulltext.queryNodes('entity_names', $query) YIELD node, score
RETURN node.name AS name, elementId(node) AS node_id, score
LIMIT $limit
