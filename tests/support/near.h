/* near.h: a cmocka assertion on doubles (cmocka's assert_float_equal narrows to float). Include
 * after cmocka.h and math.h. */
#ifndef CASTOR_TESTS_NEAR_H
#define CASTOR_TESTS_NEAR_H

/* a and b within tol of each other; NaN never is. */
#define assert_near(a, b, tol)                                                                \
    do {                                                                                      \
        double a_ = (a), b_ = (b);                                                            \
        if (!(fabs(a_ - b_) <= (tol)))                                                        \
            fail_msg("%s = %.17g, expected %.17g (tolerance %g)", #a, a_, b_, (double)(tol)); \
    } while (0)

#endif
