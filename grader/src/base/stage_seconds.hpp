// Where the wall time of grading went, stage by stage: a batch adds its students' up for its figures.
#pragma once

namespace cugrade {

struct StageSeconds {
    double build = 0.0;        // building (or finding in the cache) and inspecting the submission
    double startup = 0.0;      // harness processes starting and ending, outside any case (not under the sanitizer)
    double correctness = 0.0;  // cases without timing or race check
    double race_check = 0.0;   // compute-sanitizer racecheck processes, their start and end included
    double speed = 0.0;        // speed tests, sampling included
    double diagnosis = 0.0;    // failing cases run again under compute-sanitizer to find their cause
    double gpu_wait = 0.0;     // waiting for a GPU shared with other gradings (counted in no stage above)
    // Cases set aside (they seemed to hang while a speed test waited) waiting for a quiet GPU, their student's place
    // given up so that the others are graded meanwhile: a wait of the student's, not a cost of the batch's.
    double quiet_wait = 0.0;
    // A slow speed test waiting, its place given up likewise, for a round of profiles (counters_rounds.hpp).
    double round_wait = 0.0;

    // The waits, which no stage counts.
    double waits() const { return gpu_wait + quiet_wait + round_wait; }
    void add_waits(const StageSeconds& other) {
        gpu_wait += other.gpu_wait;
        quiet_wait += other.quiet_wait;
        round_wait += other.round_wait;
    }

    StageSeconds& operator+=(const StageSeconds& other) {
        build += other.build;
        startup += other.startup;
        correctness += other.correctness;
        race_check += other.race_check;
        speed += other.speed;
        diagnosis += other.diagnosis;
        add_waits(other);
        return *this;
    }
};

}  // namespace cugrade
