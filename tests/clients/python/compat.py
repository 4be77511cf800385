#!/usr/bin/python3
"""kafka-python 2.0 (Debian's python3-kafka) against a running broker.

    compat.py <bootstrap host:port> [basic|group]

basic: admin (create/describe/delete topic), 10,000 keyed messages with
  headers to 4 partitions (half gzip, half uncompressed), read back by a
  consumer without a group (assign + seek_to_beginning), every message once.
group: a group consumer (subscribe) from the beginning; exits 77 (skipped)
  while the broker does not serve JoinGroup.

Exit status: 0 passed, 1 failed, 77 skipped.
"""
import sys
import time

SKIP = 77
TOTAL = 10000
PARTITIONS = 4
API_KEY_JOIN_GROUP = 11

try:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
except ImportError:
    print("kafka-python is not installed (apt-get install python3-kafka): SKIPPED")
    sys.exit(SKIP)


class CompatError(Exception):
    pass


def message_for(i):
    codec = b"gzip" if i < TOTAL // 2 else b"none"
    return (f"key-{i}".encode(), f"value-{i}-{'x' * (i % 97)}".encode(),
            [("seq", str(i).encode()), ("codec", codec)])


def check_message(m, where):
    headers = dict(m.headers or [])
    if "seq" not in headers:
        raise CompatError(f"{where}: message without a seq header")
    seq = int(headers["seq"])
    key, value, want_headers = message_for(seq)
    if m.key != key or m.value != value or headers != dict(want_headers):
        raise CompatError(f"{where}: message for seq {seq} differs from what was sent")
    return seq


def create_topic(admin, topic):
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout_ms=10000)
    deadline = time.time() + 10
    while topic not in admin.list_topics():
        if time.time() > deadline:
            raise CompatError(f"{topic} not listed after creation")
        time.sleep(0.1)
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    entries = {e[0]: e[1] for e in res[0].resources[0][4]}
    if entries.get("cleanup.policy") != "delete":
        raise CompatError(f"describe_configs: cleanup.policy is {entries.get('cleanup.policy')}")
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})])
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    entries = {e[0]: e[1] for e in res[0].resources[0][4]}
    if entries.get("retention.ms") != "3600000":
        raise CompatError(f"alter_configs: retention.ms reads {entries.get('retention.ms')}")


def produce_all(bootstrap, topic, total):
    partitions_used = set()
    for codec, lo, hi in (("gzip", 0, total // 2), (None, total // 2, total)):
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec,
                                 linger_ms=5, client_id="cairn-python-compat")
        futures = []
        for i in range(lo, hi):
            key, value, headers = message_for(i)
            futures.append(producer.send(topic, key=key, value=value, headers=headers))
        producer.flush(30)
        for f in futures:
            partitions_used.add(f.get(timeout=30).partition)
        producer.close(10)
    if len(partitions_used) != PARTITIONS:
        raise CompatError(f"messages reached {len(partitions_used)} partitions, expected {PARTITIONS}")


def consume(consumer, total, what):
    seen = bytearray(total)
    count = 0
    last_offset = {}
    deadline = time.time() + 60
    while count < total:
        if time.time() > deadline:
            raise CompatError(f"{what}: {count} of {total} messages after 60 s")
        for tp, messages in consumer.poll(timeout_ms=500).items():
            for m in messages:
                if m.offset <= last_offset.get(tp.partition, -1):
                    raise CompatError(f"{what}: partition {tp.partition} offset {m.offset} out of order")
                last_offset[tp.partition] = m.offset
                seq = check_message(m, f"{tp.topic}-{tp.partition}@{m.offset}")
                if seen[seq]:
                    raise CompatError(f"{what}: seq {seq} read twice")
                seen[seq] = 1
                count += 1
    return count


def basic(bootstrap):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="cairn-python-compat")
    topic = f"python-basic-{int(time.time() * 1000)}"
    create_topic(admin, topic)
    t0 = time.time()
    produce_all(bootstrap, topic, TOTAL)
    t1 = time.time()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             client_id="cairn-python-compat")
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    count = consume(consumer, TOTAL, "assign consumer")
    ends = consumer.end_offsets(tps)
    if sum(ends.values()) != TOTAL:
        raise CompatError(f"end offsets sum to {sum(ends.values())}, expected {TOTAL}")
    consumer.close()
    t2 = time.time()
    admin.delete_topics([topic], timeout_ms=10000)
    admin.close()
    print(f"kafka-python basic: {count} messages produced in {int((t1 - t0) * 1000)} ms, "
          f"consumed and checked in {int((t2 - t1) * 1000)} ms")
    return 0


def group(bootstrap):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="cairn-python-compat")
    versions = admin._client.get_api_versions() or {}
    if API_KEY_JOIN_GROUP not in versions:
        print("kafka-python group: SKIPPED, the broker does not serve JoinGroup")
        admin.close()
        return SKIP
    topic = f"python-group-{int(time.time() * 1000)}"
    create_topic(admin, topic)
    total = 2000
    produce_all(bootstrap, topic, total)
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"{topic}-group",
                             auto_offset_reset="earliest", client_id="cairn-python-compat")
    count = consume(consumer, total, "group consumer")
    consumer.commit()
    consumer.close()
    admin.delete_topics([topic], timeout_ms=10000)
    admin.close()
    print(f"kafka-python group: {count} messages consumed through a consumer group")
    return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    bootstrap = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "basic"
    try:
        if mode == "basic":
            return basic(bootstrap)
        if mode == "group":
            return group(bootstrap)
    except CompatError as e:
        print(f"kafka-python compat: FAILED: {e}", file=sys.stderr)
        return 1
    print(f"unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
