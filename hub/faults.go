package hub

// StorageCode classifies a failed write as the hub classifies its own:
// StorageFull for a full disk or quota (ENOSPC, EDQUOT), else
// StorageFailed. It is for writes made outside the hub — an attachment
// upload (internal/diskerr) — so that every door answers a storage fault
// with the same code. Any goroutine may call it.
func StorageCode(err error) string { return storageCode(err) }
