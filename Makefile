# Thin wrapper around CMake. `make run` starts a single-node broker on
# localhost:9092 with data in ./data; `make test` runs every test.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
# ctest jobs; tests that assert time bounds run alone (tests/CMakeLists.txt).
# Most integration tests wait on brokers and clients rather than compute, so
# the release pass runs four at a time on two cores and the sanitizer pass
# three (258 tests: 1171 s at two jobs, 980 s at three, 754 s at four, where
# the load made integration_test_cli_failover's consumer give up once).
TEST_JOBS ?= 4
ASAN_TEST_JOBS ?= 3

.PHONY: all deps client-deps test-clients build run test test-unit test-integration test-asan fuzz bench bench-txn conformance sim chaos clean

all: build

deps:
	./scripts/setup-deps.sh

# Node + kafkajs and kafka-python for tests/clients (skipped when missing).
client-deps:
	./scripts/setup-deps.sh --clients

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/core/server/cairnd $(ARGS)

# Every test: unit and integration in the release build, then the
# unit and integration tests again under ASan+UBSan, then a short fuzz run.
# The other-language client tests (tests/clients) run in the first pass.
# In CI (CI=true) a skip outside tests/ci/allowed-skips.txt, or fewer tests
# than it states, fails the run.
test: build client-deps
	@# Test times of an earlier run (tests/ci/ctest-costs.txt), when this build has none, so ctest
	@# starts the longest first; ctest keeps them current from then on.
	mkdir -p $(BUILD)/Testing/Temporary
	[ -e $(BUILD)/Testing/Temporary/CTestCostData.txt ] || cp tests/ci/ctest-costs.txt $(BUILD)/Testing/Temporary/CTestCostData.txt
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) --output-junit $(CURDIR)/$(BUILD)/ctest-junit.xml
	if [ "$$CI" = true ]; then tests/ci/check_test_run.py $(BUILD)/ctest-junit.xml tests/ci/allowed-skips.txt; fi
	$(MAKE) test-asan
	$(MAKE) fuzz FUZZ_SECONDS=30

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -L unit

test-integration: build
	cd $(BUILD) && ctest --output-on-failure -L integration

test-clients: build client-deps
	cd $(BUILD) && ctest --output-on-failure -L clients

# The sanitizer pass leaves out the other-language client tests (the
# broker paths they reach run under the librdkafka tests) and the smoke runs
# of the benchmark tools, which check the tools' output; the hostile-client
# and conformance smokes stay. ASAN_EXCLUDE= runs them all.
ASAN_EXCLUDE ?= ^(clients_|tools_(create_cost|metadata_scale|replication_acks|tenant_|tiered_|tls_|txn_verify))
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	@# The release pass's test times, when there are none yet, so ctest starts the longest first.
	mkdir -p $(ASAN_BUILD)/Testing/Temporary
	[ -e $(ASAN_BUILD)/Testing/Temporary/CTestCostData.txt ] || [ ! -e $(BUILD)/Testing/Temporary/CTestCostData.txt ] || \
		cp $(BUILD)/Testing/Temporary/CTestCostData.txt $(ASAN_BUILD)/Testing/Temporary/
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(ASAN_TEST_JOBS) -LE slow $(if $(ASAN_EXCLUDE),-E '$(ASAN_EXCLUDE)')

# The KRaft quorum simulator over SEEDS seeds from SEED_FIRST; a failing
# seed prints the command that replays it with a trace.
SEEDS ?= 500
SEED_FIRST ?= 1
sim: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS) --target raft_sim
	$(BUILD)/tests/sim/raft_sim --seeds $(SEEDS) --first $(SEED_FIRST)

FUZZ_SECONDS ?= 300
fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCAIRN_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_request_decode fuzz_record_codec fuzz_record_batch record_batch_seeds fuzz_internal_records internal_records_seeds fuzz_broker_requests broker_request_seeds fuzz_sasl_messages sasl_messages_seeds
	mkdir -p build-fuzz/corpus build-fuzz/corpus-codec build-fuzz/corpus-batch build-fuzz/corpus-internal build-fuzz/corpus-broker build-fuzz/corpus-sasl
	build-fuzz/tests/fuzz/record_batch_seeds build-fuzz/corpus-batch
	build-fuzz/tests/fuzz/internal_records_seeds build-fuzz/corpus-internal
	build-fuzz/tests/fuzz/broker_request_seeds build-fuzz/corpus-broker
	cp tests/fuzz/broker-regressions/* build-fuzz/corpus-broker/
	build-fuzz/tests/fuzz/sasl_messages_seeds build-fuzz/corpus-sasl
	tests/fuzz/run-pairs.sh build-fuzz $(FUZZ_SECONDS) fuzz_request_decode:corpus fuzz_record_codec:corpus-codec \
		fuzz_record_batch:corpus-batch fuzz_internal_records:corpus-internal \
		fuzz_broker_requests:corpus-broker fuzz_sasl_messages:corpus-sasl

bench: build
	tools/bench/compare.sh $(BUILD)/core/server/cairnd

# Transactions of 1, 100 and 10 000 records against the idempotent producer.
bench-txn: build
	tools/bench/txn.sh $(BUILD)/core/server/cairnd --bench $(BUILD)/tools/bench/cairn-bench $(ARGS)

# Transactional produce with transaction verification on and off (docs/benchmarks.md).
.PHONY: bench-txn-verify
bench-txn-verify: build
	tools/bench/txn_verify.sh $(BUILD)/core/server/cairnd --bench $(BUILD)/tools/bench/cairn-bench $(ARGS)

# Consumer group rebalance: 20 members + 1 joining on 100 partitions, eager
# vs cooperative-sticky (docs/benchmarks.md). REBALANCE_ARGS="--runs 3" etc.
.PHONY: bench-rebalance
bench-rebalance: build
	$(BUILD)/tools/bench/cairn-rebalance-bench --cairnd $(BUILD)/core/server/cairnd $(REBALANCE_ARGS)

# A good librdkafka producer alone and beside abusive clients (connection
# flood, trickling senders, non-readers, big requests), side by side
# (docs/benchmarks.md). HOSTILE_ARGS="--records 500000" etc.
.PHONY: bench-hostile
bench-hostile: build
	tools/hostile-bench --cairnd $(BUILD)/core/server/cairnd --bench $(BUILD)/tools/bench/cairn-bench $(HOSTILE_ARGS)

# A chaos run of SECONDS on a local 3-node cluster: kill -9 and SIGSTOP
# faults from a seed (SEED, else a new one; printed), an idempotent acks=all
# workload, then the checker (docs/operations.md, "Chaos runs").
# RF=3 for replication factor 3; CHAOS_ARGS="--keep --rate 100" etc., e.g.
# CHAOS_ARGS="--min-insync 2 --txn-producers 1 --faults kill,pause,partition".
SECONDS ?= 300
RF ?= 1
SEED ?=
chaos: build
	tools/chaos/chaos-run --seconds $(SECONDS) --rf $(RF) $(if $(SEED),--seed $(SEED)) $(CHAOS_ARGS)

conformance: build
	tools/conformance/run.sh --cairnd $(BUILD)/core/server/cairnd

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
