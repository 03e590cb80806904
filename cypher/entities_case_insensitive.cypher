// Entities whose name equals $name when case is ignored (a scan; used only when the exact
// name is not found, for suggestions and entity linking).
MATCH (n:Entity)
WHERE toLower(n.name) = toLower($name)
RETURN n.name AS name, elementId(n) AS node_id
LIMIT $limit
