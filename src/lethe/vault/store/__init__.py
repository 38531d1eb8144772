"""Storage: engines and transactions, tables, migrations, the event log, the projection, replay."""
