# Lethe's VaultTransitKms: the least a Vault/OpenBao token needs.
# Replace "transit" with LETHE_VAULT_TRANSIT_MOUNT if it differs, and give Lethe a
# mount of its own: "+" below matches every key in the mount.
# Verified by tests/integration/test_vault_transit.py (test_minimal_policy_is_sufficient).

# Create (only non-exportable AES-256-GCM keys without plaintext backup), read the
# key's configuration, and hard-delete it.
path "transit/keys/+" {
  capabilities = ["read", "update", "delete"]
  allowed_parameters = {
    "type"                   = ["aes256-gcm96"]
    "exportable"             = [false]
    "allow_plaintext_backup" = [false]
  }
}

# Before deleting: allow deletion, and nothing else (never exportable or backup).
path "transit/keys/+/config" {
  capabilities = ["update"]
  allowed_parameters = {
    "deletion_allowed" = [true]
  }
}

# Generate a data key (returned in plaintext and wrapped) and unwrap stored ones.
path "transit/datakey/plaintext/+" {
  capabilities = ["update"]
}

path "transit/decrypt/+" {
  capabilities = ["update"]
}

# health(): check the token is still valid (sys/health needs no token).
path "auth/token/lookup-self" {
  capabilities = ["read"]
}
