// pmix dr ClientStore: the lookup order of get (process, then its job) and
// when a miss is final or worth asking the server about.
#include <gtest/gtest.h>

#include "client_store.hpp"
#include "pmix_test_util.hpp"

namespace {

using namespace pmix_dr_test;

const ProcName kJob5{5, kRankWildcard};

TEST(PmixClientStore, ProcessKeyThenJobKey) {
    ClientStore s;
    s.ingest({kJob5, {{"k", Value::string(3, "job")}, {"size", Value::scalar(9, 4, 4)}}}, false);
    s.put({5, 1}, {"k", Value::string(3, "mine")});
    ASSERT_NE(s.find({5, 1}, "k"), nullptr);
    EXPECT_EQ(s.find({5, 1}, "k")->bytes, "mine");
    EXPECT_EQ(s.find({5, 2}, "k")->bytes, "job");  // falls back to the job
    EXPECT_EQ(s.find({5, 1}, "size")->bits, 4u);
    EXPECT_EQ(s.find(kJob5, "k")->bytes, "job");
    EXPECT_EQ(s.find({6, 1}, "k"), nullptr);
    EXPECT_EQ(s.find({5, 1}, "absent"), nullptr);
}

TEST(PmixClientStore, LaterDataReplacesKeys) {
    ClientStore s;
    s.put({5, 1}, {"k", Value::scalar(1, 1, 1)});
    s.put({5, 1}, {"k", Value::scalar(1, 1, 2)});
    EXPECT_EQ(s.find({5, 1}, "k")->bits, 2u);
    s.ingest({{5, 1}, {{"k", Value::null_string(3)}, {"j", Value::scalar(1, 1, 3)}}}, false);
    EXPECT_TRUE(s.find({5, 1}, "k")->null);
    EXPECT_EQ(s.find({5, 1}, "j")->bits, 3u);
}

TEST(PmixClientStore, MissRules) {
    ClientStore s;
    EXPECT_EQ(s.miss({5, 1}, true), GetAction::NotFound);
    EXPECT_EQ(s.miss({5, 1}, false), GetAction::AskServer);
    EXPECT_EQ(s.miss(kJob5, false), GetAction::AskServer);  // job data not here yet
    s.mark_job_known(5);
    EXPECT_TRUE(s.job_known(5));
    EXPECT_EQ(s.miss(kJob5, false), GetAction::NotFound);
    EXPECT_EQ(s.miss({6, kRankWildcard}, false), GetAction::AskServer);
    EXPECT_EQ(s.miss({5, 1}, false), GetAction::AskServer);  // may not have committed yet
    s.ingest({{5, 1}, {}}, false);
    EXPECT_EQ(s.miss({5, 1}, false), GetAction::AskServer);
    s.ingest({{5, 1}, {}}, true);  // everything it will ever publish
    EXPECT_EQ(s.miss({5, 1}, false), GetAction::NotFound);
    EXPECT_EQ(s.miss({5, 2}, false), GetAction::AskServer);
}

}  // namespace
