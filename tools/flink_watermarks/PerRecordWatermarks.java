package sparktide.flink;

import org.apache.flink.api.common.eventtime.RecordTimestampAssigner;
import org.apache.flink.api.common.eventtime.TimestampAssigner;
import org.apache.flink.api.common.eventtime.TimestampAssignerSupplier;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkGeneratorSupplier;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.types.Row;

/**
 * A watermark strategy whose generator emits a watermark after every record: the bounded
 * out-of-orderness watermark {@code maxTimestamp - delay - 1}, but from {@code onEvent} (a
 * punctuated generator) instead of periodically. Watermarks then depend only on the order of the
 * records, never on processing time, which makes a parallelism-1 window job deterministic.
 *
 * <p>Timestamps: the record's own ({@link #of}; e.g. set by PyFlink's
 * {@code with_timestamp_assigner}), or a field of a {@code Tuple} or {@code Row} record
 * ({@link #withTimestampField}), which keeps Python out of timestamp assignment.
 *
 * <p>From PyFlink, after {@code env.add_jars("file:///.../flink-watermarks.jar")}: {@code
 * WatermarkStrategy(get_gateway().jvm.sparktide.flink.PerRecordWatermarks.of(delay))}.
 */
public final class PerRecordWatermarks<T> implements WatermarkStrategy<T> {

    private static final long serialVersionUID = 1L;

    private final long delay;
    private final int timestampField;

    /** Records keep their own timestamps; {@code delay}: the bound in ms ({@code >= 0}). */
    public PerRecordWatermarks(long delay) {
        this(delay, -1);
    }

    /**
     * {@code delay}: the out-of-orderness bound in milliseconds ({@code >= 0}); {@code
     * timestampField}: the position of the timestamp (a {@code Number}) in {@code Tuple} or {@code
     * Row} records, or -1 to keep the records' own timestamps.
     */
    public PerRecordWatermarks(long delay, int timestampField) {
        if (delay < 0) {
            throw new IllegalArgumentException("delay must be >= 0 ms, got " + delay);
        }
        if (timestampField < -1) {
            throw new IllegalArgumentException(
                    "timestampField must be a field position >= 0, or -1 for the records' own "
                            + "timestamps, got " + timestampField);
        }
        this.delay = delay;
        this.timestampField = timestampField;
    }

    /** Watermarks for records that already carry timestamps (Py4J passes ints, not longs). */
    public static <T> PerRecordWatermarks<T> of(int delay) {
        return new PerRecordWatermarks<>(delay);
    }

    /** Watermarks, and timestamps read from field {@code field} of Tuple or Row records. */
    public static <T> PerRecordWatermarks<T> withTimestampField(int delay, int field) {
        return new PerRecordWatermarks<>(delay, field);
    }

    public long getDelay() {
        return delay;
    }

    public int getTimestampField() {
        return timestampField;
    }

    @Override
    public TimestampAssigner<T> createTimestampAssigner(TimestampAssignerSupplier.Context context) {
        if (timestampField < 0) {
            return new RecordTimestampAssigner<>();
        }
        return new FieldTimestampAssigner<>(timestampField);
    }

    @Override
    public WatermarkGenerator<T> createWatermarkGenerator(
            WatermarkGeneratorSupplier.Context context) {
        return new Generator<>(delay);
    }

    /** Emits {@code max(timestamps seen) - delay - 1} after each record. */
    static final class Generator<T> implements WatermarkGenerator<T> {

        private final long delay;
        private long maxTimestamp;

        Generator(long delay) {
            this.delay = delay;
            this.maxTimestamp = Long.MIN_VALUE + delay + 1;
        }

        @Override
        public void onEvent(T event, long eventTimestamp, WatermarkOutput output) {
            maxTimestamp = Math.max(maxTimestamp, eventTimestamp);
            output.emitWatermark(new Watermark(maxTimestamp - delay - 1));
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput output) {
            // every watermark is emitted from onEvent
        }
    }

    /** The timestamp at a position of a Tuple or Row record. */
    static final class FieldTimestampAssigner<T> implements TimestampAssigner<T> {

        private final int field;

        FieldTimestampAssigner(int field) {
            this.field = field;
        }

        @Override
        public long extractTimestamp(T element, long recordTimestamp) {
            Object value;
            if (element instanceof Tuple) {
                value = ((Tuple) element).getField(field);
            } else if (element instanceof Row) {
                value = ((Row) element).getField(field);
            } else {
                throw new IllegalArgumentException(
                        "timestamps can be read from Tuple or Row records only, got "
                                + (element == null ? "null" : element.getClass().getName()));
            }
            if (!(value instanceof Number)) {
                throw new IllegalArgumentException(
                        "field " + field + " must hold a number (the timestamp in ms), got "
                                + value);
            }
            return ((Number) value).longValue();
        }
    }
}
