"""The right to be forgotten: jobs (model, service, steps, their SQL), forgetting, compaction, backups."""
