package lib.grants_test

import data.lib.grants

now := 1000

root := {"id": "grt_root", "revoked": false, "expires_at_ms": 5000}

child := {"id": "grt_child", "revoked": false, "expires_at_ms": 4000}

test_active_chain if grants.status([child, root], now) == "active"

test_revoked_ancestor_revokes if grants.status([child, object.union(root, {"revoked": true})], now) == "revoked"

test_expired_ancestor_expires if grants.status([child, object.union(root, {"expires_at_ms": 1000})], now) == "expired"

test_revocation_wins_over_expiry if {
	grants.status([object.union(child, {"expires_at_ms": 10}), object.union(root, {"revoked": true})], now) == "revoked"
}

pod_grant(mode, listed) := {"target": {"kind": "pod", "id": "pod_1"}, "audience_mode": mode, "audience": listed}

test_members_audience_follows_membership if {
	grants.effective_audience(pod_grant("members", []), ["alice", "agt_1"]) == {"alice", "agt_1"}
}

test_listed_audience_drops_removed_members if {
	grants.effective_audience(pod_grant("listed", ["alice", "bob"]), ["alice", "carol"]) == {"alice"}
}

test_seat_audience_while_installed if {
	grants.effective_audience({"target": {"kind": "seat", "id": "agt_1"}}, ["alice", "agt_1"]) == {"agt_1"}
}

test_uninstalled_seat_has_no_audience if {
	grants.effective_audience({"target": {"kind": "seat", "id": "agt_1"}}, ["alice"]) == set()
}

test_write_rank_orders_modes if grants.write_rank.read < grants.write_rank.write

test_write_tools_are_beyond_read_only if {
	grants.tool_beyond_mode("write", "read")
	not grants.tool_beyond_mode("read", "read")
	not grants.tool_beyond_mode("write", "write")
	grants.tools_beyond_mode(["a", "b"], "read", {"a": "read", "b": "write"})
	not grants.tools_beyond_mode(["a"], "read", {"a": "read", "b": "write"})
}
