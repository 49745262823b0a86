-- Placeholder: version 5 belongs to another branch of work (idempotency
-- keys), merged separately. It changes nothing; the merge replaces this file.
SELECT 1;
