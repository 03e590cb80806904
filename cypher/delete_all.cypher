// Empties the database in batches (needs an auto-commit transaction). Keeps the schema.
MATCH (n)
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF 10000 ROWS
