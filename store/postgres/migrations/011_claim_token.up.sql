-- The token of the claim that leased the task: each Claim writes one of its
-- own, so that a claim whose reply was lost (a connection broken after
-- COMMIT) can find the tasks it leased, and only those (store/postgres
-- claim.go). NULL for a task never claimed by Claim. A nullable column
-- without a default is added without rewriting the table; it is in no
-- index, so that the claim's update stays what it was.
ALTER TABLE mcptasks_tasks ADD COLUMN claim_token text;
