/* Cairn plugin SDK: names for the numbers plugins receive (Kafka's API
 * keys, ACL operations, resource types and pattern types), as Kafka spells
 * them. Header-only: nothing here crosses the ABI, so a plugin gets the
 * names of the SDK it was built with; an unknown number gives "UNKNOWN". */
#ifndef CAIRN_NAMES_H
#define CAIRN_NAMES_H

#include <stdint.h>

#include "cairn/authz.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "Produce", "Fetch", ... for cairn_request_info.api_key; "UNKNOWN" for -1
 * (an event outside a request) or a key this SDK does not know. */
static inline const char *cairn_api_key_name(int32_t api_key)
{
    static const char *const names[] = {
        "Produce",
        "Fetch",
        "ListOffsets",
        "Metadata",
        "LeaderAndIsr",
        "StopReplica",
        "UpdateMetadata",
        "ControlledShutdown",
        "OffsetCommit",
        "OffsetFetch",
        "FindCoordinator",
        "JoinGroup",
        "Heartbeat",
        "LeaveGroup",
        "SyncGroup",
        "DescribeGroups",
        "ListGroups",
        "SaslHandshake",
        "ApiVersions",
        "CreateTopics",
        "DeleteTopics",
        "DeleteRecords",
        "InitProducerId",
        "OffsetForLeaderEpoch",
        "AddPartitionsToTxn",
        "AddOffsetsToTxn",
        "EndTxn",
        "WriteTxnMarkers",
        "TxnOffsetCommit",
        "DescribeAcls",
        "CreateAcls",
        "DeleteAcls",
        "DescribeConfigs",
        "AlterConfigs",
        "AlterReplicaLogDirs",
        "DescribeLogDirs",
        "SaslAuthenticate",
        "CreatePartitions",
        "CreateDelegationToken",
        "RenewDelegationToken",
        "ExpireDelegationToken",
        "DescribeDelegationToken",
        "DeleteGroups",
        "ElectLeaders",
        "IncrementalAlterConfigs",
        "AlterPartitionReassignments",
        "ListPartitionReassignments",
        "OffsetDelete",
        "DescribeClientQuotas",
        "AlterClientQuotas",
        "DescribeUserScramCredentials",
        "AlterUserScramCredentials",
        "Vote",
        "BeginQuorumEpoch",
        "EndQuorumEpoch",
        "DescribeQuorum",
        "AlterPartition",
        "UpdateFeatures",
        "Envelope",
        "FetchSnapshot",
        "DescribeCluster",
        "DescribeProducers",
        "BrokerRegistration",
        "BrokerHeartbeat",
        "UnregisterBroker",
        "DescribeTransactions",
        "ListTransactions",
        "AllocateProducerIds",
        "ConsumerGroupHeartbeat",
        "ConsumerGroupDescribe",
        "ControllerRegistration",
        "GetTelemetrySubscriptions",
        "PushTelemetry",
        "AssignReplicasToDirs",
        "ListClientMetricsResources",
        "DescribeTopicPartitions",
        "ShareGroupHeartbeat",
        "ShareGroupDescribe",
        "ShareFetch",
        "ShareAcknowledge",
        "AddRaftVoter",
        "RemoveRaftVoter",
        "UpdateRaftVoter",
        "InitializeShareGroupState",
        "ReadShareGroupState",
        "WriteShareGroupState",
        "DeleteShareGroupState",
        "ReadShareGroupStateSummary",
    };
    if (api_key < 0 || (uint32_t)api_key >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[api_key];
}

/* "READ", "WRITE", ... for enum cairn_acl_operation (Kafka's AclOperation). */
static inline const char *cairn_operation_name(int32_t operation)
{
    static const char *const names[] = {
        "UNKNOWN",
        "ANY",
        "ALL",
        "READ",
        "WRITE",
        "CREATE",
        "DELETE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "CREATE_TOKENS",
        "DESCRIBE_TOKENS",
    };
    if (operation < 0 || (uint32_t)operation >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[operation];
}

/* "TOPIC", "GROUP", ... for enum cairn_resource_type (Kafka's ResourceType). */
static inline const char *cairn_resource_type_name(int32_t resource_type)
{
    static const char *const names[] = {
        "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER",
    };
    if (resource_type < 0 || (uint32_t)resource_type >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[resource_type];
}

/* "LITERAL", "PREFIXED", ... for enum cairn_pattern_type (Kafka's PatternType). */
static inline const char *cairn_pattern_type_name(int32_t pattern_type)
{
    static const char *const names[] = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
    if (pattern_type < 0 || (uint32_t)pattern_type >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[pattern_type];
}

#ifdef __cplusplus
}
#endif

#endif
