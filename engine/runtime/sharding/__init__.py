"""Orders spread over operator replicas: membership Leases, a hash ring, labels, a drain handshake.

- ``ring``: rendezvous hashing of an order's key over the live members, and member names.
- ``labels``: the shard and drain labels on orders, the member label on Leases.
- ``member``: every replica's side: its membership Lease, which requests it may run, the drain ack; with
  ``takeover`` (an order's children labelled for it first) and ``handback`` (its label taken off its orders).
- ``assigner``: the leader's side: which members are live, and the label each order should carry.
- ``fence``: a member's passes write only while its tenure holds.
- ``serving``: which rules and order kinds a member serves, said on its Lease; which members may get an order of a
  kind.

Decision 0027 says why no order is ever in two passes at once.
"""
