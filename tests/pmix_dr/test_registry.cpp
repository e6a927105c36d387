// pmix dr server registry: register_nspace data split into records, commits
// split by scope, who may connect, and who takes part in a collective.
#include <gtest/gtest.h>

#include <vector>

#include "pmix_test_util.hpp"
#include "registry.hpp"

namespace {

using namespace pmix_dr_test;

constexpr std::uint16_t kVpidType = 11;

KvList pdata(std::vector<KeyValue> values) {
    return {{"pmix.pdata", Value::nested(22, std::move(values))}};
}

TEST(PmixJobRecords, SplitsPerProcessDataByRank) {
    KvList info{{"pmix.jsize", Value::scalar(9, 4, 3)}};
    const KeyValue rank0{"pmix.rank", Value::scalar(kVpidType, 4, 0)};
    const KeyValue rank2{"pmix.rank", Value::proc(kVpidType, {99, 2})};  // a Name: its vpid
    const KeyValue host{"pmix.hname", Value::string(3, "n0")};
    for (const KvList& l :
         {pdata({rank0, host}), pdata({host}),  // no rank: skipped
          pdata({host, rank2}), pdata({{"pmix.rank", Value::scalar(kVpidType, 4, kRankWildcard)}}),
          pdata({{"pmix.rank", Value::string(3, "1")}})})
        info.insert(info.end(), l.begin(), l.end());
    const KeyValue not_a_list{"pmix.pdata", Value::string(3, "odd")};
    info.push_back(not_a_list);

    const std::vector<Record> recs = job_records(7, info, "pmix.pdata", "pmix.rank");
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(recs[0].proc, (ProcName{7, kRankWildcard}));
    EXPECT_EQ(recs[0].values, (KvList{info[0], not_a_list}));
    EXPECT_EQ(recs[1].proc, (ProcName{7, 0}));
    EXPECT_EQ(recs[1].values, (KvList{rank0, host}));
    EXPECT_EQ(recs[2].proc, (ProcName{7, 2}));
    EXPECT_EQ(recs[2].values, (KvList{host, rank2}));
}

TEST(PmixJobRecords, MergeReplacesKeysAndAppendsNewOnes) {
    KvList into{{"a", Value::scalar(1, 1, 1)}, {"b", Value::string(3, "old")}};
    merge(into, {{"b", Value::null_string(3), Scope::Local}, {"c", Value::scalar(1, 1, 3)}});
    EXPECT_EQ(into, (KvList{{"a", Value::scalar(1, 1, 1)},
                            {"b", Value::null_string(3), Scope::Local},
                            {"c", Value::scalar(1, 1, 3)}}));
}

class PmixRegistry : public ::testing::Test {
  protected:
    void SetUp() override {
        reg.add_job(5, 2, job_records(5, {}, "p", "r"));
        reg.add_client({5, 0}, 1000, 100, nullptr).secret = 42;
        reg.add_client({5, 1}, 1000, 100, nullptr).secret = 43;
    }
    Registry reg;
};

TEST_F(PmixRegistry, AuthenticateChecksEverything) {
    auto ok = reg.authenticate({5, 0}, 42);
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(*ok, reg.client({5, 0}));
    EXPECT_EQ(reg.authenticate({5, 2}, 42).error().code, ErrorCode::UnknownPeer);
    EXPECT_EQ(reg.authenticate({5, 0}, 43).error().code, ErrorCode::InvalidArgument);
    EXPECT_EQ(reg.authenticate({5, 1}, 42).error().code, ErrorCode::InvalidArgument);
    reg.client({5, 0})->connected = true;
    EXPECT_EQ(reg.authenticate({5, 0}, 42).error().code, ErrorCode::Duplicate);
}

TEST_F(PmixRegistry, SecretZeroIsNeverAccepted) {
    reg.add_client({5, 3}, 1000, 100, nullptr);  // secret not set
    EXPECT_EQ(reg.authenticate({5, 3}, 0).error().code, ErrorCode::InvalidArgument);
}

TEST_F(PmixRegistry, ClientOfAnUnknownJobIsUnknown) {
    reg.add_client({6, 0}, 1000, 100, nullptr).secret = 9;
    EXPECT_EQ(reg.authenticate({6, 0}, 9).error().code, ErrorCode::UnknownPeer);
    reg.add_job(6, 1, {});
    EXPECT_TRUE(reg.authenticate({6, 0}, 9).has_value());
}

TEST_F(PmixRegistry, ReregistrationKeepsClientsAndRemoveJobDropsThem) {
    int host = 0;
    reg.add_client({6, 0}, 1, 1, &host);
    reg.client({5, 0})->connected = true;
    reg.add_job(5, 2, {{{5, kRankWildcard}, {{"new", Value::scalar(1, 1, 1)}}}});
    EXPECT_EQ(reg.job(5)->records.at(0).values.size(), 1u);
    EXPECT_TRUE(reg.client({5, 0})->connected);
    reg.remove_job(5);
    EXPECT_EQ(reg.job(5), nullptr);
    EXPECT_EQ(reg.client({5, 0}), nullptr);
    EXPECT_EQ(reg.client({5, 1}), nullptr);
    ASSERT_NE(reg.client({6, 0}), nullptr);
    EXPECT_EQ(reg.client({6, 0})->host_object, &host);
    EXPECT_EQ(reg.clients(), 1u);
}

TEST_F(PmixRegistry, CommitSplitsByScope) {
    Client& c = *reg.client({5, 0});
    const KeyValue local{"l", Value::scalar(1, 1, 1), Scope::Local};
    const KeyValue remote{"r", Value::scalar(1, 1, 2), Scope::Remote};
    const KeyValue global{"g", Value::scalar(1, 1, 3), Scope::Global};
    Registry::commit(c, {local, remote, global});
    EXPECT_TRUE(c.committed);
    EXPECT_EQ(c.local, (KvList{local, global}));
    EXPECT_EQ(c.remote, (KvList{remote, global}));
    // A second commit replaces keys in the scopes it names.
    const KeyValue global2{"g", Value::string(3, "new"), Scope::Global};
    Registry::commit(c, {global2});
    EXPECT_EQ(c.local, (KvList{local, global2}));
    EXPECT_EQ(c.remote, (KvList{remote, global2}));
}

TEST_F(PmixRegistry, LocalMembersOfWildcardAndExplicitProcs) {
    reg.add_client({6, 4}, 1, 1, nullptr);
    reg.add_client({4, 9}, 1, 1, nullptr);
    const std::vector<ProcName> wild{{5, kRankWildcard}};
    EXPECT_EQ(reg.local_members(wild), (std::vector<ProcName>{{5, 0}, {5, 1}}));
    const std::vector<ProcName> mixed{
        {6, 4}, {5, 1}, {6, 5}, {5, kRankWildcard}, {7, kRankWildcard}};
    EXPECT_EQ(reg.local_members(mixed), (std::vector<ProcName>{{5, 0}, {5, 1}, {6, 4}}));
    const std::vector<ProcName> remote_only{{5, 7}, {8, kRankWildcard}};
    EXPECT_TRUE(reg.local_members(remote_only).empty());
    reg.remove_client({5, 1});
    EXPECT_EQ(reg.local_members(wild), (std::vector<ProcName>{{5, 0}}));
}

}  // namespace
