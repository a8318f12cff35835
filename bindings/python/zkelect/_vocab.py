"""libzkelect's words, written by gen/vocab.py from gen/vocabulary.toml:
edit the table, not this file.

ERRORS maps each error code to its exception's name (the Rust crate's
ErrorKind) and the built-in exception it also is; EVENTS and REASONS are
the names zkelect_event_type_name() and zkelect_reason_name() give;
COUNTERS the names of zkelect_counter_name(); KEYWORDS maps each keyword of
zkelect.connect() to its configuration key.
"""

# BEGIN gen/vocab.py vocabulary
ERRORS = {
    -1: ('InvalidArgument', ValueError),
    -2: ('NoMemory', MemoryError),
    -3: ('State', None),
    -4: ('Closed', None),
    -5: ('TimedOut', TimeoutError),
    -6: ('ConnectionLoss', None),
    -7: ('SessionExpired', None),
    -8: ('Auth', None),
    -9: ('NotSupported', None),
    -10: ('Deadlock', None),
    -11: ('ZooKeeper', None),
    -12: ('Internal', None),
    -13: ('NoLeader', None),
    -14: ('Range', None),
    -15: ('NotLeader', None),
    -16: ('NoCandidate', None),
    -17: ('TargetLost', None),
    -18: ('LimitExceeded', None),
    -19: ('Fenced', None),
}
EVENTS = (
    'ELECTED',
    'DEPOSED',
    'FOLLOWING',
    'SUSPENDED',
    'RECONNECTED',
    'EXPIRED',
    'LEADER_CHANGED',
    'ERROR',
    'RESIGNED',
    'OVERFLOW',
    'WARNING',
    'STEPPED_BACK',
    'LEASE_LOW',
)
REASONS = ('none', 'resigned', 'suspended', 'lease_ended', 'expired', 'node_deleted', 'closed', 'transferred',)
COUNTERS = (
    'terms_won',
    'deposed_resigned',
    'deposed_suspended',
    'deposed_lease_ended',
    'deposed_expired',
    'deposed_node_deleted',
    'deposed_closed',
    'reconnects',
    'expiries',
    'zk_requests',
    'keepalives',
    'sequence_near_wrap',
    'session_timeout_below_two_ticks',
    'crash_guard_warnings',
    'lease_low',
    'balance_moves',
)
KEYWORDS = {
    'hosts': 'zk.hosts',
    'session_timeout_ms': 'zk.session.timeout.ms',
    'connect_timeout_ms': 'zk.connect.timeout.ms',
    'auth': 'zk.auth',
    'acl': 'election.acl',
    'priority': 'election.priority',
    'priority_holddown_ms': 'election.priority.holddown.ms',
    'transfer_drain_ms': 'transfer.drain.ms',
    'lease_warn_percent': 'lease.warn.percent',
    'leadership': 'leadership',
    'lease_margin_ms': 'lease.margin.ms',
    'session_nodes_max_bytes': 'zk.session.nodes.max.bytes',
    'events_queue_max': 'events.queue.max',
    'log_level': 'zk.log.level',
    'probe_ticktime': 'zk.probe.ticktime',
    'tls_ca': 'zk.tls.ca',
    'tls_cert': 'zk.tls.cert',
    'tls_key': 'zk.tls.key',
    'tls_key_password': 'zk.tls.key.password',
    'tls_hostname_verify': 'zk.tls.hostname.verify',
    'hosts_follow': 'zk.hosts.follow',
    'crash_guard': 'crash.guard',
    'crash_guard_delay_ms': 'crash.guard.delay.ms',
    'sasl_mechanism': 'zk.sasl.mechanism',
    'sasl_user': 'zk.sasl.user',
    'sasl_password_file': 'zk.sasl.password.file',
    'sasl_service': 'zk.sasl.service',
    'sasl_host': 'zk.sasl.host',
    'crash_guard_socket': 'crash.guard.socket',
    'balance_group': 'balance.group',
    'balance_moves_max': 'balance.moves.max',
}
# END gen/vocab.py vocabulary
