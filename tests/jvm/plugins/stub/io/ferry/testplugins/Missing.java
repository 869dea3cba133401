// Compiled for MissingBaseConnector to extend, and left out of the jar: the connector cannot link.
package io.ferry.testplugins;

import org.apache.kafka.connect.source.SourceConnector;

public abstract class Missing extends SourceConnector {}
