// What a fenced multi's reply means (cxx/election/fenced_write.h): the check's
// failure is the term's end, a refused user operation is named by index,
// connection trouble is an unknown outcome, never a refusal.
#include "fenced_write.h"

#include <zookeeper/zookeeper.h>

#include <gtest/gtest.h>

#include "errors.h"

using namespace zkelect;

namespace {

Reply reply(int rc, std::vector<int> results = {}) {
    Reply r;
    r.rc = rc;
    r.results = std::move(results);
    return r;
}

}  // namespace

TEST(FencedOutcome, CommittedIsOk) {
    int failed = 7, zk_rc = 7;
    std::string why;
    EXPECT_EQ(fenced_outcome(reply(ZOK, {ZOK, ZOK}), 1, &failed, &zk_rc, &why), kOk);
    EXPECT_EQ(failed, -1);
    EXPECT_EQ(zk_rc, 0);
}

TEST(FencedOutcome, TheChecksFailureIsTheTermsEnd) {
    int failed, zk_rc;
    std::string why;
    for (int rc : {ZNONODE, ZBADVERSION}) {
        EXPECT_EQ(fenced_outcome(reply(rc, {rc, ZRUNTIMEINCONSISTENCY, ZRUNTIMEINCONSISTENCY}), 2,
                                 &failed, &zk_rc, &why),
                  kEFenced);
        EXPECT_EQ(failed, -1);
        EXPECT_EQ(zk_rc, rc);
        EXPECT_NE(why.find("term is over"), std::string::npos) << why;
    }
}

TEST(FencedOutcome, AUserOperationsRefusalNamesIt) {
    int failed, zk_rc;
    std::string why;
    // The check and op 0 passed (rolled back), op 1 failed, op 2 not tried.
    EXPECT_EQ(fenced_outcome(reply(ZNODEEXISTS, {ZOK, ZOK, ZNODEEXISTS, ZRUNTIMEINCONSISTENCY}), 3,
                             &failed, &zk_rc, &why),
              kEZk);
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(zk_rc, ZNODEEXISTS);
    // ZNONODE of a user's set is not the fence's.
    EXPECT_EQ(fenced_outcome(reply(ZNONODE, {ZOK, ZNONODE}), 1, &failed, &zk_rc, &why), kEZk);
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(fenced_outcome(reply(ZNOAUTH, {ZOK, ZNOAUTH}), 1, &failed, &zk_rc, &why), kEAuth);
    EXPECT_EQ(failed, 0);
}

TEST(FencedOutcome, ConnectionTroubleIsAnUnknownOutcome) {
    int failed, zk_rc;
    std::string why;
    EXPECT_EQ(fenced_outcome(reply(ZCONNECTIONLOSS), 1, &failed, &zk_rc, &why), kEConnLoss);
    EXPECT_NE(why.find("may or may not have committed"), std::string::npos) << why;
    EXPECT_EQ(fenced_outcome(reply(ZOPERATIONTIMEOUT), 1, &failed, &zk_rc, &why), kEConnLoss);
    EXPECT_EQ(fenced_outcome(reply(ZSESSIONEXPIRED), 1, &failed, &zk_rc, &why), kESessionExpired);
    EXPECT_EQ(failed, -1);
    EXPECT_EQ(zk_rc, ZSESSIONEXPIRED);
}

TEST(FencedOutcome, AnswersWithoutResults) {
    int failed, zk_rc;
    std::string why;
    EXPECT_EQ(fenced_outcome(reply(ZUNIMPLEMENTED), 1, &failed, &zk_rc, &why), kENotSup);
    EXPECT_EQ(fenced_outcome(reply(ZNOAUTH), 1, &failed, &zk_rc, &why), kEAuth);
    EXPECT_EQ(fenced_outcome(reply(ZMARSHALLINGERROR), 1, &failed, &zk_rc, &why), kEZk);
    EXPECT_EQ(failed, -1);
}
