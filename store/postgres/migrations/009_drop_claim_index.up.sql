-- mcptasks_tasks_claim indexed every live task (working or input_required),
-- so a create wrote one index entry more than it needs: the claims walk
-- mcptasks_tasks_claimable, and the counts and lists of live tasks read
-- mcptasks_tasks_claimable for the working and held ones and
-- mcptasks_tasks_status for those waiting for input.
DROP INDEX mcptasks_tasks_claim;
