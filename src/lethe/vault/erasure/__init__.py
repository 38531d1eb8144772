"""The right to be forgotten: jobs (model, service, steps, leases, their SQL), deadlines
(Art. 12(3) arithmetic and the extend/pause/resume commands), forgetting, compaction, backups."""
