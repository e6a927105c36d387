// oob drtcp admission: only a known daemon of our job, addressed to us, not
// already connected (unless it claims a reconnect), gets past its first frame.
#include <gtest/gtest.h>

#include "admission.hpp"

namespace {

using namespace oob::drtcp::core;

constexpr std::uint32_t kJob = 0x46CE0000u;

AdmissionFacts facts(std::uint32_t me, std::uint32_t daemons) {
    AdmissionFacts f;
    f.me = {kJob, me};
    f.num_daemons = daemons;
    return f;
}

TEST(OobAdmission, OnlyDaemonsOfTheJob) {
    const AdmissionFacts f = facts(0, 3);
    EXPECT_EQ(admit(f, {kJob, 1}, {kJob, 0}, false), Admission::Admit);
    EXPECT_EQ(admit(f, {kJob, 2}, {kJob, 0}, false), Admission::Admit);
    EXPECT_EQ(admit(f, {kJob + 1, 1}, {kJob, 0}, false), Admission::ForeignJob);  // a rank
    EXPECT_EQ(admit(f, {kJob ^ 0x10000u, 1}, {kJob, 0}, false), Admission::ForeignJob);
    EXPECT_EQ(admit(f, {kJob, 3}, {kJob, 0}, false), Admission::UnknownDaemon);
    EXPECT_EQ(admit(f, {kJob, kNameWildcard}, {kJob, 0}, false), Admission::ForeignJob);
    EXPECT_EQ(admit(f, {kNameInvalid, 1}, {kJob, 0}, false), Admission::ForeignJob);
    EXPECT_EQ(admit(f, {kJob, 0}, {kJob, 0}, false), Admission::Self);
}

TEST(OobAdmission, IssueTwentyFourOneHostJobHasNoDaemonOne) {
    // mpirun of a one-host job: the only daemon is itself.
    EXPECT_EQ(admit(facts(0, 1), {kJob, 1}, {kJob, 0}, false), Admission::UnknownDaemon);
}

TEST(OobAdmission, UnknownToOrteIsRefused) {
    AdmissionFacts f = facts(0, 4);
    f.known = false;
    EXPECT_EQ(admit(f, {kJob, 1}, {kJob, 0}, false), Admission::UnknownDaemon);
}

TEST(OobAdmission, MustBeAddressedToUs) {
    const AdmissionFacts f = facts(1, 4);
    EXPECT_EQ(admit(f, {kJob, 0}, {kJob, 2}, false), Admission::NotForUs);
    EXPECT_EQ(admit(f, {kJob, 0}, {kJob, 1}, false), Admission::Admit);
}

TEST(OobAdmission, AlreadyConnectedNeedsAReconnect) {
    AdmissionFacts f = facts(0, 4);
    f.connected = true;
    EXPECT_EQ(admit(f, {kJob, 2}, {kJob, 0}, false), Admission::AlreadyConnected);
    EXPECT_EQ(admit(f, {kJob, 2}, {kJob, 0}, true), Admission::Admit);
    EXPECT_TRUE(hostile(Admission::AlreadyConnected));
}

TEST(OobAdmission, SimultaneousConnectTheSmallerNameWins) {
    AdmissionFacts f = facts(2, 4);
    f.connecting = true;
    EXPECT_EQ(admit(f, {kJob, 1}, {kJob, 2}, false), Admission::Admit);
    EXPECT_EQ(admit(f, {kJob, 3}, {kJob, 2}, false), Admission::LostRace);
    EXPECT_FALSE(hostile(Admission::LostRace));
}

}  // namespace
