"""The per-node daemon: worker leases, resources, worker pool, object store host."""
